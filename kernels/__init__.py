"""Attention maths only: the PyTorch oracle and CPU path (`reference`), the Triton kernels (later), and the
one adapter (`hf`) that plugs them into transformers. Nothing here imports transformers except `hf`."""
