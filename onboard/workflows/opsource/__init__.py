"""Reading an op's source for `onboard where` and `onboard locate`.

The pieces: the yaml index (native_functions.yaml and derivatives.yaml read
with torchgen), the code index (kernel macros and definitions under
aten/src/ATen/native), the check index (TORCH_CHECK-style sites and Python
`raise` sites), the live facts of the installed binary (one child
interpreter), and the C++ trace parser. Indexes are cached per tree
(``XDG_CACHE_HOME/onboard/opsource/``).
"""
