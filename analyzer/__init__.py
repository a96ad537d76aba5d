"""gpu-hang-guard: make GPU/ML CI tell the truth about hangs, silent crashes and dead workers."""

__version__ = "0.1.0"
