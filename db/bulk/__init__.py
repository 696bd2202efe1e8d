"""Reading and moving whole stores: Arrow and cursor streams, stored traces read back, copies."""
