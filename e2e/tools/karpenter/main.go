// Karpenter's kwok provider, wired as sigs.k8s.io/karpenter/kwok's own main does, plus what the
// AWS provider does that kwok does not:
//   - the label that keys a reserved offering to its capacity reservation. Without it Karpenter
//     cannot tell reservations apart, so reserved NodePools would never be limited by the
//     reservation's size;
//   - the AWS provider's repair policies (node/health acts on the conditions a cloud provider
//     lists). kwok lists only kubelet Ready, so a GPU fault reported by the EKS node monitoring
//     agent (AcceleratedHardwareReady False under a live kubelet) would never be repaired.
package main

import (
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kwok "sigs.k8s.io/karpenter/kwok/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/overlay"
	"sigs.k8s.io/karpenter/pkg/controllers"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/operator"
)

// The AWS provider's label (karpenter-provider-aws pkg/apis/v1 LabelCapacityReservationID).
const capacityReservationID = "karpenter.k8s.aws/capacity-reservation-id"

// REPAIR_TOLERATION (a Go duration) replaces the toleration of the node monitoring agent's
// conditions. The e2e suite sets a few seconds: upstream's 10 and 30 minutes are longer than a
// scenario can wait, and the conditions, the 20 % rule and the deletion stay the real
// controller's. Kubelet Ready keeps its 30 minutes: a kwok node that misses heartbeats on a
// loaded machine must not be replaced under another scenario's work.
const repairTolerationEnv = "REPAIR_TOLERATION"

// awsRepair is the kwok provider with the AWS provider's RepairPolicies.
type awsRepair struct {
	cloudprovider.CloudProvider
	policies []cloudprovider.RepairPolicy
}

func (p awsRepair) RepairPolicies() []cloudprovider.RepairPolicy { return p.policies }

// awsRepairPolicies: karpenter-provider-aws pkg/cloudprovider RepairPolicies (kubelet Ready
// False or Unknown for 30 minutes; the node monitoring agent's conditions False, 10 minutes
// for AcceleratedHardwareReady and 30 for the others), the agent's toleration `toleration` if set.
func awsRepairPolicies(toleration time.Duration) []cloudprovider.RepairPolicy {
	policy := func(condition corev1.NodeConditionType, status corev1.ConditionStatus, upstream time.Duration) cloudprovider.RepairPolicy {
		if toleration > 0 {
			upstream = toleration
		}
		return cloudprovider.RepairPolicy{ConditionType: condition, ConditionStatus: status, TolerationDuration: upstream}
	}
	kubelet := func(status corev1.ConditionStatus) cloudprovider.RepairPolicy {
		return cloudprovider.RepairPolicy{ConditionType: corev1.NodeReady, ConditionStatus: status, TolerationDuration: 30 * time.Minute}
	}
	return []cloudprovider.RepairPolicy{
		kubelet(corev1.ConditionFalse),
		kubelet(corev1.ConditionUnknown),
		policy("AcceleratedHardwareReady", corev1.ConditionFalse, 10*time.Minute),
		policy("StorageReady", corev1.ConditionFalse, 30*time.Minute),
		policy("NetworkingReady", corev1.ConditionFalse, 30*time.Minute),
		policy("KernelReady", corev1.ConditionFalse, 30*time.Minute),
		policy("ContainerRuntimeReady", corev1.ConditionFalse, 30*time.Minute),
	}
}

func main() {
	cloudprovider.ReservationIDLabel = capacityReservationID
	cloudprovider.ReservedCapacityLabels.Insert(capacityReservationID)

	ctx, op := operator.NewOperator()
	var toleration time.Duration
	if text := os.Getenv(repairTolerationEnv); text != "" {
		parsed, err := time.ParseDuration(text)
		if err != nil || parsed <= 0 {
			log.FromContext(ctx).Error(err, "invalid "+repairTolerationEnv+", a positive Go duration", "value", text)
			os.Exit(2)
		}
		toleration = parsed
	}
	instanceTypes, err := kwok.ConstructInstanceTypes(ctx)
	if err != nil {
		log.FromContext(ctx).Error(err, "failed constructing instance types")
	}
	undecorated := awsRepair{kwok.NewCloudProvider(ctx, op.GetClient(), instanceTypes), awsRepairPolicies(toleration)}
	decorated := overlay.Decorate(undecorated, op.GetClient(), op.InstanceTypeStore)
	clusterState := state.NewCluster(op.Clock, op.GetClient(), decorated)
	op.WithControllers(ctx, controllers.NewControllers(
		ctx, op.Manager, op.Clock, op.GetClient(), op.EventRecorder,
		decorated, undecorated, clusterState, op.InstanceTypeStore,
	)...).Start(ctx)
}
