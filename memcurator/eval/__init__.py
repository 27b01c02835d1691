"""Evaluation: external datasets converted to logs plus separate gold, measured raw vs curated."""
