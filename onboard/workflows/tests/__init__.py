"""`onboard tests`: which of PyTorch's tests cover a change, and (``--run``) run them."""
