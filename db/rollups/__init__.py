"""The rollups: summary tables the import keeps exact, how they are read, their value buckets."""
