"""Share groups (KIP-932): share partitions, the share coordinator and group membership."""
