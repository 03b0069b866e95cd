"""The real-engine suite: the platform's output run by the real Kubernetes control plane,
Kueue and Karpenter's kwok provider, all built from Go modules (`make e2e-tools`)."""
