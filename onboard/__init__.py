"""onboard: from "I use PyTorch" to contributing to PyTorch, for the torch you have."""

__version__ = "0.1.0"
