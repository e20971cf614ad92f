"""Ranking: text and graph hits in, fused and explained `Hit`s out (plus the rule-based follow-up round)."""
