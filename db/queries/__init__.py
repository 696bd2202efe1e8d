"""Read queries behind the dashboard pages: each returns a pandas DataFrame or plain values."""
