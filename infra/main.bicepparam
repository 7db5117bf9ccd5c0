// Parameters for infra/main.bicep:
//   az deployment group create -g <rg> -f infra/main.bicep -p infra/main.bicepparam
// Anything not set here takes main.bicep's default, which equals the code's default (src/app/settings.ts).
using './main.bicep'

// Prefix of every resource name, 3-10 characters; only its letters and digits are used, lowercased ('My-App' -> 'myapp').
param namePrefix = 'leader'

// Regions: by default ONE app in the resource group's region, with the coordination account and Application
// Insights beside it. Programmatic ('swedencentral') and display names ('Sweden Central') both work. For several apps
// in several regions that share ONE coordination account and elect ONE leader through the blob lease, uncomment and
// edit (every region must offer Flex Consumption:
// az functionapp list-flexconsumption-locations -o table):
// param appRegions = [
//   'swedencentral'
//   'northeurope'
// ]
// param coordinationLocation = 'swedencentral'

param coordinationStorageSkuName = 'Standard_LRS'

// Flex Consumption scale-out bound and instance size.
param maximumInstanceCount = 40
param instanceMemoryMB = 2048

// Node.js major version of the apps: '22' (the floor the code is tested on) or '24'.
param nodeVersion = '22'

param logRetentionInDays = 30

param tags = {
  app: 'leader-coordinator'
}

// Coordinator timer: every minute, the heartbeat; submissions wake the coordinator at once (WAKE_QUEUE). Within one
// app the host runs the timer on one instance at a time; across apps the lease decides who coordinates.
param coordinatorSchedule = '0 * * * * *'
