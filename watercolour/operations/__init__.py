"""Operations around a run: the scorer Space's lifecycle, health checks of remote services, publishing to the Hub."""
