// Karpenter's kwok provider, wired as sigs.k8s.io/karpenter/kwok's own main does, plus the one
// thing the AWS provider sets that kwok does not: the label that keys a reserved offering to its
// capacity reservation. Without it Karpenter cannot tell reservations apart, so reserved NodePools
// would never be limited by the reservation's size.
package main

import (
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

func main() {
	cloudprovider.ReservationIDLabel = capacityReservationID
	cloudprovider.ReservedCapacityLabels.Insert(capacityReservationID)

	ctx, op := operator.NewOperator()
	instanceTypes, err := kwok.ConstructInstanceTypes(ctx)
	if err != nil {
		log.FromContext(ctx).Error(err, "failed constructing instance types")
	}
	undecorated := kwok.NewCloudProvider(ctx, op.GetClient(), instanceTypes)
	decorated := overlay.Decorate(undecorated, op.GetClient(), op.InstanceTypeStore)
	clusterState := state.NewCluster(op.Clock, op.GetClient(), decorated)
	op.WithControllers(ctx, controllers.NewControllers(
		ctx, op.Manager, op.Clock, op.GetClient(), op.EventRecorder,
		decorated, undecorated, clusterState, op.InstanceTypeStore,
	)...).Start(ctx)
}
