"""The catalogue of the app's sentences, one module per page or area, English and 简体中文 side by side.

Each module holds ``ENTRIES``: tuples ``(key, English, 中文)`` in the order of
:data:`inspector.base.i18n.LANGUAGES`, grouped by what shows them. :mod:`inspector.base.i18n` merges the modules and
is the API (:func:`~inspector.base.i18n.t`); nothing else imports them, and they import nothing."""
