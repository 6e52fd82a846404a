"""The Forgejo / Gitea SCM plugin, run out of process as ``promoter-scm-forgejo``."""
