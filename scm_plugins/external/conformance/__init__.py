"""The conformance kit for out-of-process plugins (``promoter plugins test``): the
protocol's calls checked against a real plugin process (``kit``), its events
(``events``), and its behaviour under faults: an SCM outage, ids, floods (``faults``)."""

__all__: list[str] = []
