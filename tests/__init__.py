"""ShardDB's tests, one folder per subject; ``docs/development/tests.md`` keeps their map."""
