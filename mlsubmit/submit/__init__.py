"""The submit sequence, owned in one place (docs/architecture.md): :mod:`.plan`, :mod:`.run`, :mod:`.failover`
with its :mod:`.candidates`, :mod:`.preflight`; import from the modules."""
