"""Where a test's model comes from: the head-class rule (heads), tiny seeded models of any
transformers architecture and local checkpoints (factory, its reduction rules in reduction and
overrides.json), Hub models (hub), a team's own code (code_model), seeded inputs (inputs) and
the catalog of model types (catalog, `python -m compatlab_probe.models.catalog`)."""
