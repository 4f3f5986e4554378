"""Real loopback HTTP servers for tests (127.0.0.1, a free port, a thread each): no mocks of httpx."""
