"""Pulumi ComponentResources of the platform: aws/ and kubernetes/ parts under one root."""

from .platform import GpuPlatform, GpuPlatformArgs

__all__ = ["GpuPlatform", "GpuPlatformArgs"]
