"""`onboard reviews` and `onboard blame`: what PyTorch's reviewers said about the code
you are changing.

History (git, or the API for the reference tree) says which pull requests landed
the lines and who approved them; the GitHub API, through a cache that keeps
every answer, says what reviewers wrote on them. Modules: ``tree`` (the checkout
and the files named), ``history`` (landed PRs, the history fetch), ``blame``,
``trailers`` (commit messages), ``merge_rules``, ``codeowners``, ``comments``
(threads and anchors), ``pulls`` (the API), ``results``, ``view``/``markdown``;
``run_blame`` and ``run_reviews`` tie them together. Nothing is imported here, so
`where` and `locate` load only ``hint``.
"""
