"""The git adapter, by git concept. Callers import this package and call through its
modules (``git.refs.update_ref(...)``), never a function imported on its own, so that
a test can stand in for one at the moment it runs.

- ``core``: the one door every git command goes through (told to the open
  transaction, which it names in the reflog: ``onboard.journalling``; no optional
  locks for reads, lock errors that name the lock and its holder);
- ``repository``: where a repository is, its git folder and object store, making one;
- ``refs``: HEAD, branches, every ref at once, moving one;
- ``status``: what the work tree holds against HEAD (``git status``, also started ahead);
- ``worktree``: checking out into the work tree, searching it, linked work trees;
- ``remote``: remotes, fetch, push, submodules;
- ``history``: commits, logs, diffs, committing the index;
- ``blame``: who last changed each line;
- ``bisect``: ``git bisect`` as documented;
- ``state``: what a rollback asks before it writes (the user's operation in
  progress, reflogs, blobs, a checkout that reports instead of raising).
"""

from onboard.git import (  # noqa: F401 (the modules are this package's interface)
    bisect,
    blame,
    core,
    history,
    refs,
    remote,
    repository,
    state,
    status,
    worktree,
)
