"""The GitHub adapter, by job. Callers import the module they need
(``from onboard.github.token import find_token``); this package imports none of
them, so a command that only asks "is there a token?" loads nothing more, and
PyGithub itself is imported only when a client is made.

- ``token``: which token to use and where it came from; the API's web host;
- ``client``: PyGithub's client made the one way onboard makes it, and
  ``GitHubUnavailable``, what every failure becomes;
- ``answers``: the readers every value from an answer goes through (a proxy's
  HTML page or JSON of another shape is ``Malformed``, not a crash);
- ``issues``: one repository's issues, for `onboard harvest`;
- ``pulls``: what `onboard pr --open` asks and changes (a draft pull request);
- ``rest``: one GET of the REST API with its status and headers (the rate
  limit, a wait GitHub asks for, a refusal);
- ``cache``: REST answers kept on disk and asked again only with
  ``If-None-Match``, for `onboard reviews`.
"""
