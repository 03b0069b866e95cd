// The Kubernetes provider, served as its own cmd/pulumi-resource-kubernetes does. That main embeds
// copies of its schema that the provider's release build generates and the module does not carry;
// build.py places the module's own schema.json and terraform-mapping.json beside this file in a
// build directory outside the clone before it builds.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema.json
var pulumiSchema []byte

//go:embed terraform-mapping.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
