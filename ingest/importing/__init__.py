"""Importing: records -> traces -> rows, written in batches through db's write door."""
