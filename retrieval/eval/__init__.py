"""Evaluation (drives the pipeline, is not a stage): benchmark folders and question sets in, R@k/Hit@k tables out."""
