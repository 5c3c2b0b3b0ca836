"""Attention maths only: the PyTorch oracle and CPU path (`reference`), the Triton FlashAttention kernels
(`flash`, with their device code in `flash_kernels` and an ahead-of-time compile check in `flash_aot`), and
the one adapter (`hf`) that plugs them into transformers. Nothing here imports transformers except `hf`."""
