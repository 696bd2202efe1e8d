"""The live OTLP/HTTP receiver: spool, assembler, store."""
