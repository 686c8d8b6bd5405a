"""The partition log: the storage seam and its file and memory implementations."""

from coordinator.log.file_log import FileLog, FileStorage
from coordinator.log.memory_log import CorruptBatchError, MemoryLog, MemoryStorage
from coordinator.log.storage import LogConfig, PartitionLog, Storage

__all__ = [
    "CorruptBatchError",
    "FileLog",
    "FileStorage",
    "LogConfig",
    "MemoryLog",
    "MemoryStorage",
    "PartitionLog",
    "Storage",
]
