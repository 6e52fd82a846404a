"""A git process, the one way promoter starts one: ``runner.run_git`` (no prompt, no
credential in a message, a stale lock of a killed git retried once), its environment
(``child_env``), the credentials given to it and kept out of every message
(``credentials``), stale index and ref locks (``stale_lock``) and the git it runs
(``version``)."""

__all__: list[str] = []
