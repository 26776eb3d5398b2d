"""`onboard reviews` and `onboard blame`: what PyTorch's reviewers said about the code
you are changing.

History (git, or the API for the reference tree) says which pull requests landed the
lines and who approved them; the GitHub API, through a cache that keeps every
answer, says what reviewers wrote on them. Modules: ``request`` (what the two
commands are asked), ``tree`` (the checkout and the files named), ``history``
(landed PRs, the history fetch), ``blame``, ``trailers`` (commit messages),
``merge_rules``, ``codeowners``, ``comments`` (threads and anchors), ``context``
(what both commands share: the checkout, the review source, a PR with its threads),
``pulls`` (the API), ``suggest`` (the reviewers `pr` suggests), ``results``,
``markdown`` (the --md answer; the terminal's is ``onboard/views/reviews.py``);
``run_blame`` and ``run_reviews`` tie them together; ``hint`` is the one line
`where` and `locate` print. Nothing is imported here, so `where` and `locate` load
only ``hint``.
"""
