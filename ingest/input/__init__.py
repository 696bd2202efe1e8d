"""Trace input: bytes in, records out (files, folders, gzip, JSON streams, OTLP exports)."""
