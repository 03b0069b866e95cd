// Karpenter's kwok provider, wired as sigs.k8s.io/karpenter/kwok's own main does, plus what the
// AWS provider does that kwok does not:
//   - the label that keys a reserved offering to its capacity reservation. Without it Karpenter
//     cannot tell reservations apart, so reserved NodePools would never be limited by the
//     reservation's size;
//   - the AWS provider's repair policies (repair acts on the conditions, reasons and actions a
//     cloud provider lists). kwok lists its own simulated conditions, so a GPU fault reported by
//     the EKS node monitoring agent (AcceleratedHardwareReady False under a live kubelet) would
//     never be repaired, nor rebooted under the AWS provider's RebootForRepair gate. kwok's own
//     Reboot (a new boot ID) stands in for EC2's RebootInstances.
package main

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/samber/lo"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kwok "sigs.k8s.io/karpenter/kwok/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/overlay"
	"sigs.k8s.io/karpenter/pkg/controllers"
	"sigs.k8s.io/karpenter/pkg/controllers/node/health"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/operator"
)

// The AWS provider's label (karpenter-provider-aws pkg/apis/v1 LabelCapacityReservationID).
const capacityReservationID = "karpenter.k8s.aws/capacity-reservation-id"

// REPAIR_TOLERATION (a Go duration) replaces the toleration of the node monitoring agent's
// conditions. The e2e suite sets a few seconds: upstream's 10 and 30 minutes are longer than a
// scenario can wait, and the conditions, the 20 % rule, the reboot or replacement stay the real
// controller's. Kubelet Ready keeps its 30 minutes: a kwok node that misses heartbeats on a
// loaded machine must not be replaced under another scenario's work.
const repairTolerationEnv = "REPAIR_TOLERATION"

// awsRepair is the kwok provider with the AWS provider's RepairPolicies.
type awsRepair struct {
	cloudprovider.CloudProvider
	policies []cloudprovider.RepairPolicy
}

func (p awsRepair) RepairPolicies() []cloudprovider.RepairPolicy { return p.policies }

// The AWS provider's reason split of AcceleratedHardwareReady (karpenter-provider-aws v1.15.2
// pkg/cloudprovider RepairPolicies): the node monitoring agent names the GPU XID in the reason.
const (
	rebootClearableXIDs = `.*XID(46|48|54|62|63|95|109|110|136|140|143|155|156|158).*`
	fatalXIDs           = `.*XID(64|74|79|119|120).*`
)

// awsRepairPolicies: karpenter-provider-aws v1.15.2 pkg/cloudprovider RepairPolicies, field by
// field: kubelet Ready False or Unknown for 30 minutes; AcceleratedHardwareReady False 10
// minutes for a reboot-clearable XID (a reboot when `reboot`, the RebootForRepair gate, else a
// replacement) or a fatal one (replaced), 30 for any other reason; the agent's other conditions
// 30. `toleration`, if set, replaces the agent's tolerations.
func awsRepairPolicies(toleration time.Duration, reboot bool) []cloudprovider.RepairPolicy {
	agent := func(condition corev1.NodeConditionType, reason string, upstream, drain time.Duration, action cloudprovider.RepairAction) cloudprovider.RepairPolicy {
		if toleration > 0 {
			upstream = toleration
		}
		return cloudprovider.RepairPolicy{ConditionType: condition, ConditionStatus: corev1.ConditionFalse, ReasonRegex: reason,
			TolerationDuration: upstream, TerminationGracePeriod: lo.ToPtr(drain), Action: action}
	}
	kubelet := func(status corev1.ConditionStatus) cloudprovider.RepairPolicy {
		return cloudprovider.RepairPolicy{ConditionType: corev1.NodeReady, ConditionStatus: status, ReasonRegex: ".*",
			TolerationDuration: 30 * time.Minute, TerminationGracePeriod: lo.ToPtr(10 * time.Minute), Action: cloudprovider.ReplaceNode}
	}
	replace := cloudprovider.ReplaceNode
	return []cloudprovider.RepairPolicy{
		kubelet(corev1.ConditionFalse),
		kubelet(corev1.ConditionUnknown),
		agent("AcceleratedHardwareReady", rebootClearableXIDs, 10*time.Minute, 5*time.Minute, lo.Ternary(reboot, cloudprovider.RebootNode, replace)),
		agent("AcceleratedHardwareReady", fatalXIDs, 10*time.Minute, 5*time.Minute, replace),
		agent("AcceleratedHardwareReady", "", 30*time.Minute, 10*time.Minute, replace), // the one default fallback
		agent("StorageReady", ".*", 30*time.Minute, 10*time.Minute, replace),
		agent("NetworkingReady", ".*", 30*time.Minute, 10*time.Minute, replace),
		agent("KernelReady", ".*", 30*time.Minute, 10*time.Minute, replace),
		agent("ContainerRuntimeReady", ".*", 30*time.Minute, 10*time.Minute, replace),
	}
}

// rebootForRepair reads the AWS provider's RebootForRepair gate from AWS_FEATURE_GATES, as the
// chart sets it (karpenter-provider-aws pkg/operator/options: "Name=bool,...", default false).
func rebootForRepair() (bool, error) {
	for _, gate := range strings.Split(os.Getenv("AWS_FEATURE_GATES"), ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(gate), "=")
		if name == "RebootForRepair" {
			return strconv.ParseBool(value)
		}
	}
	return false, nil
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
	reboot, err := rebootForRepair()
	if err != nil {
		log.FromContext(ctx).Error(err, "invalid RebootForRepair in AWS_FEATURE_GATES")
		os.Exit(2)
	}
	undecorated := awsRepair{kwok.NewCloudProvider(ctx, op.GetClient(), instanceTypes), awsRepairPolicies(toleration, reboot)}
	decorated := overlay.Decorate(undecorated, op.GetClient(), op.InstanceTypeStore)
	matcher := lo.Must(health.NewRepairPolicyMatcher(ctx, decorated))
	clusterState := state.NewCluster(op.Clock, op.GetClient(), decorated, state.WithRepairPolicyMatcher(matcher))
	op.WithControllers(ctx, controllers.NewControllers(
		ctx, op.Manager, op.Clock, op.GetClient(), op.EventRecorder,
		decorated, undecorated, clusterState, op.InstanceTypeStore, op.PredictionStore,
	)...).Start(ctx)
}
