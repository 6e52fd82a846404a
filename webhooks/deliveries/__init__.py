"""The delivery log: which webhook deliveries were already handled.

A delivery id seen within the retention window is a duplicate. ``log`` holds the newest
ids in memory and says whether an id was seen; ``journal`` is the append-only file of
what SQLite does not hold yet; ``store`` is the SQLite file of every id of the window;
``id_filter`` answers "certainly not seen" without reading the disk; ``durable`` lets a
request wait on the event loop until what it recorded is on disk.
"""

__all__: list[str] = []
