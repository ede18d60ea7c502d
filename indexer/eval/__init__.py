"""Evaluation on dev sets and fusion tuning."""
