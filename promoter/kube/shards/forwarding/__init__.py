"""Work passed to the replica that owns it: the peers and their addresses (``peers``), the
connections kept to them (``peer_connections``), requests passed on (``passing``) and
signed so that only a replica of the group is believed (``signing``)."""

__all__: list[str] = []
