"""The Streamlit pages (thin drivers over :mod:`inspector`); see app.py for why the folder is not named pages/."""
