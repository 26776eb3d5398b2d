"""`onboard trace` and `onboard graph`: what the user's own program really ran.

Both run the user's Python program in a child interpreter (``launch``), never
importing torch into onboard. ``trace`` records it under torch's profiler
(``_profile_child.py``) and turns the event tree into nested aten ops, each
with the dispatch keys whose kernels ran (``dispatch``, with the guards C++
put around a call in ``guards``), its source locations (``locations``,
shared with `onboard where`; ``stubs`` picks the DispatchStub a kernel
calls, ``op_summary`` keeps the kernels that ran) and the memory the
allocator handed out; ``graph`` walks the autograd graph of the tensors the program
leaves behind (``_graph_child.py``) and ties each node to its
derivatives.yaml formula (``backward_nodes``). Neither writes into a workspace.
"""
