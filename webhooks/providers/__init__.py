"""One module per SCM that sends webhooks: how its deliveries are authenticated, named and
read, each turned into one of the normalised events of ``webhooks.events``.

GitHub, GitLab, Forgejo/Gitea, Bitbucket Cloud, Bitbucket Data Center and Azure DevOps;
the fields each event is read for are TypedDicts (``shapes``, ``bitbucket_shapes``). The
providers do not know each other (the import-linter contract ``receivers-independent``).
"""

__all__: list[str] = []
