"""Workflows: one module per command's logic. They never import click."""
