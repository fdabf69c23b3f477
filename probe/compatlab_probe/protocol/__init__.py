"""The worker protocol's formats (doc/worker-protocol.md): the request a test child is sent,
the stage marks it writes while it runs and the result object it answers with."""

PROTOCOL_VERSION = 1
