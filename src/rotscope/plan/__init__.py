"""Planning: verified work items, their order (prefix trie, interleavings), the frozen manifest."""
