"""How results look in a terminal: one module per command, the only place that
knows rich besides ``console.py``. Workflows return results; views draw them."""
