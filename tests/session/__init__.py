"""Tests of the public session API, its durability and its concurrency."""
