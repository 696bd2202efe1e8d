"""Secret redaction: text, traces and rejected records redacted before anything is stored."""
