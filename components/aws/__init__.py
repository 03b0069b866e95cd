"""AWS-side components (pulumi-aws plain resources, plus the Karpenter objects they imply)."""
