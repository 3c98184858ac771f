"""Backups (``hooks/backup/``): ``test_commands`` (the engine's command lines) and ``test_member`` (what a member's
Patroni configuration and pod template gain). The Patroni tier runs these very lines against a real S3 server."""
