"""What parsers, the analysis and storage agree on, without the database library: the
vocabulary of stored values, the row contracts, and the widths of the text columns."""
