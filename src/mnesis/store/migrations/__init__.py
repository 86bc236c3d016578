"""Named, ordered schema migrations, one transaction each, recorded in ``_mnesis_migrations``."""
