// What the coordinator needs in Azure for YOUR Function app, to reference from your own template (resource-group
// scope):
//
//   module coordinator '../node_modules/azure-leader-coordinator/bicep/coordinator.bicep' = {
//     name: 'coordinator'
//     params: {
//       storageAccountName: coordinationStorage.name
//       apps: [{ principalId: identity.properties.principalId, clientId: identity.properties.clientId }]
//     }
//   }
//
// In the coordination storage account you give it (an existing one in the same resource group), it creates the
// containers and queues the coordinator uses and grants each app's managed identity the least-privilege roles on them,
// and it outputs the app settings each app needs. docs/how-to/deploy.md walks through a whole deployment; this
// repository's own infra/main.bicep deploys through this module too.
//
// What is granted, per app identity (role ids are Azure's built-in ones, the same in every cloud):
// - Storage Blob Data Contributor on the lease, state and system containers only: the lease blob (acquire, renew,
//   release, break; create if missing), the fenced state (ETag-conditional writes), and what the app writes besides
//   (job specs, item chunks, outcomes, markers). Lease operations are blob writes, which Contributor covers.
// - Storage Blob Data Reader on the input container: job inputs are your data; the app reads and lists them, never
//   changes or deletes one.
// - Storage Blob Data Contributor on each of outputContainers (what your task kinds write), Storage Blob Data Reader
//   on each of readOnlyContainers.
// - Storage Queue Data Contributor on the account: the app sends to and receives from the work, results and wake-up
//   queues, and the Functions host creates-if-missing and writes <queue>-poison (queues/write), which the narrower
//   Message Sender/Processor roles do not cover.
// Nothing else: no Storage Blob Data Owner (it adds only POSIX ACL management, which a flat account does not use),
// no blob role on the account as a whole, no control-plane role, no keys (the account should refuse
// shared keys: allowSharedKeyAccess false).

targetScope = 'resourceGroup'

var roleIds = {
  storageBlobDataContributor: 'ba92f5b4-2d11-453d-a403-e96b0029c9fe' // Storage Blob Data Contributor
  storageBlobDataReader: '2a2b9908-6ea1-4ae2-8e65-a410df84e7d1' // Storage Blob Data Reader
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88' // Storage Queue Data Contributor
}

@export()
@description('The managed identity of one Function app that runs the coordinator.')
type appIdentity = {
  @description('Principal (object) id of the app\'s managed identity: identity.properties.principalId for a user-assigned one, site.identity.principalId for a system-assigned one.')
  principalId: string

  @description('Client id of the app\'s user-assigned identity (identity.properties.clientId), which the app authenticates as. Omit it for a system-assigned identity.')
  clientId: string?
}

@export()
@description('The app settings one app needs to reach the coordination account and find its containers and queues (src/app/settings.ts reads them). Merge them into the app\'s settings: union(yourSettings, coordinator.outputs.appSettings[i]).')
type coordinatorAppSettings = {
  @description('Blob endpoint of the coordination account (identity-based connection COORDINATION_STORAGE).')
  COORDINATION_STORAGE__blobServiceUri: string
  @description('Queue endpoint of the coordination account; the worker\'s and wake-up\'s queue triggers bind to it.')
  COORDINATION_STORAGE__queueServiceUri: string
  @description('Always managedidentity: the app authenticates with Microsoft Entra ID, never a key.')
  COORDINATION_STORAGE__credential: 'managedidentity'
  @description('The user-assigned identity\'s client id; absent for a system-assigned identity.')
  COORDINATION_STORAGE__clientId: string?
  LEASE_CONTAINER: string
  STATE_CONTAINER: string
  INPUT_CONTAINER: string
  SYSTEM_CONTAINER: string
  WORK_QUEUE: string
  RESULTS_QUEUE: string
  WAKE_QUEUE: string
}

@description('Name of the coordination storage account: an existing StorageV2 account in this resource group. Every app that should share ONE leader gets the same account.')
@minLength(3)
@maxLength(24)
param storageAccountName string

@description('The managed identities of the apps that run the coordinator against this account (several apps, e.g. one per region, share one leader). Each gets the roles above, and appSettings has one entry per app, in the same order.')
@minLength(1)
@maxLength(10)
param apps appIdentity[]

@description('LEASE_CONTAINER: container of the leader lease blob.')
@minLength(3)
@maxLength(63)
param leaseContainer string = 'leases'

@description('STATE_CONTAINER: container of the coordinator\'s fenced state.')
@minLength(3)
@maxLength(63)
param stateContainer string = 'coordinator-state'

@description('INPUT_CONTAINER: container of job input blobs, which the apps may only read. Must differ from the other three containers (the app refuses to start otherwise).')
@minLength(3)
@maxLength(63)
param inputContainer string = 'job-inputs'

@description('SYSTEM_CONTAINER: container of what the app writes besides its state (job specs, item chunks, outcomes, markers).')
@minLength(3)
@maxLength(63)
param systemContainer string = 'coordinator-system'

@description('WORK_QUEUE: queue of work units; <name>-poison is created too. At most 56 characters, so <name>-poison is a valid queue name.')
@minLength(3)
@maxLength(56)
param workQueue string = 'work-items'

@description('RESULTS_QUEUE: queue of worker results; <name>-poison is created too. At most 56 characters, so <name>-poison is a valid queue name.')
@minLength(3)
@maxLength(56)
param resultsQueue string = 'work-results'

@description('WAKE_QUEUE: queue of wake-ups (one per submission). A wake-up is never poisoned, so it has no <name>-poison queue.')
@minLength(3)
@maxLength(63)
param wakeQueue string = 'coordinator-wake'

@description('Containers your task kinds write their outputs to, in the coordination account: each is created, and each app gets Storage Blob Data Contributor on it (on nothing broader). Must differ from the four above.')
@maxLength(20)
param outputContainers string[] = []

@description('Containers your task kinds only read besides INPUT_CONTAINER (reference data, say): each is created, and each app gets Storage Blob Data Reader on it.')
@maxLength(20)
param readOnlyContainers string[] = []

// The Functions host moves a message to <queue>-poison after maxDequeueCount failed deliveries; created here so that
// nothing depends on creating it at run time.
var queueNames = [
  workQueue
  '${workQueue}-poison'
  resultsQueue
  '${resultsQueue}-poison'
  wakeQueue
]

resource account 'Microsoft.Storage/storageAccounts@2026-06-01' existing = {
  name: storageAccountName
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2026-06-01' existing = {
  parent: account
  name: 'default'
}

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2026-06-01' existing = {
  parent: account
  name: 'default'
}

resource lease 'Microsoft.Storage/storageAccounts/blobServices/containers@2026-06-01' = {
  parent: blobService
  name: leaseContainer
  properties: {
    publicAccess: 'None'
  }
}

resource state 'Microsoft.Storage/storageAccounts/blobServices/containers@2026-06-01' = {
  parent: blobService
  name: stateContainer
  properties: {
    publicAccess: 'None'
  }
}

resource inputs 'Microsoft.Storage/storageAccounts/blobServices/containers@2026-06-01' = {
  parent: blobService
  name: inputContainer
  properties: {
    publicAccess: 'None'
  }
}

resource system 'Microsoft.Storage/storageAccounts/blobServices/containers@2026-06-01' = {
  parent: blobService
  name: systemContainer
  properties: {
    publicAccess: 'None'
  }
}

resource queues 'Microsoft.Storage/storageAccounts/queueServices/queues@2026-06-01' = [
  for name in queueNames: {
    parent: queueService
    name: name
  }
]

resource inputReaders 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for app in apps: {
    name: guid(inputs.id, app.principalId, roleIds.storageBlobDataReader)
    scope: inputs
    properties: {
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataReader)
      principalId: app.principalId
      principalType: 'ServicePrincipal'
      description: 'Job inputs: read and list only.'
    }
  }
]

resource leaseWriters 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for app in apps: {
    name: guid(lease.id, app.principalId, roleIds.storageBlobDataContributor)
    scope: lease
    properties: {
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataContributor)
      principalId: app.principalId
      principalType: 'ServicePrincipal'
      description: 'Leader lease: acquire, renew, release, break; create the lease blob.'
    }
  }
]

resource stateWriters 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for app in apps: {
    name: guid(state.id, app.principalId, roleIds.storageBlobDataContributor)
    scope: state
    properties: {
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataContributor)
      principalId: app.principalId
      principalType: 'ServicePrincipal'
      description: 'Coordinator state: fenced, ETag-conditional writes.'
    }
  }
]

resource systemWriters 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for app in apps: {
    name: guid(system.id, app.principalId, roleIds.storageBlobDataContributor)
    scope: system
    properties: {
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataContributor)
      principalId: app.principalId
      principalType: 'ServicePrincipal'
      description: 'App-written blobs other than the state (SYSTEM_CONTAINER).'
    }
  }
]

resource queueUsers 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for app in apps: {
    name: guid(account.id, app.principalId, roleIds.storageQueueDataContributor)
    scope: account
    properties: {
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageQueueDataContributor)
      principalId: app.principalId
      principalType: 'ServicePrincipal'
      description: 'Work, result and wake-up queues: send, receive, delete, and poison-queue moves by the Functions host.'
    }
  }
]

resource outputs 'Microsoft.Storage/storageAccounts/blobServices/containers@2026-06-01' = [
  for name in outputContainers: {
    parent: blobService
    name: name
    properties: {
      publicAccess: 'None'
    }
  }
]

resource readOnly 'Microsoft.Storage/storageAccounts/blobServices/containers@2026-06-01' = [
  for name in readOnlyContainers: {
    parent: blobService
    name: name
    properties: {
      publicAccess: 'None'
    }
  }
]

// One grant per app and container: [{ container: index, principalId }].
var outputGrants = flatten(map(range(0, length(outputContainers)), c => map(apps, app => { container: c, principalId: app.principalId })))
var readOnlyGrants = flatten(map(range(0, length(readOnlyContainers)), c => map(apps, app => { container: c, principalId: app.principalId })))

resource outputWriters 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for grant in outputGrants: {
    name: guid(outputs[grant.container].id, grant.principalId, roleIds.storageBlobDataContributor)
    scope: outputs[grant.container]
    properties: {
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataContributor)
      principalId: grant.principalId
      principalType: 'ServicePrincipal'
      description: 'Task kinds\' outputs.'
    }
  }
]

resource readOnlyReaders 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for grant in readOnlyGrants: {
    name: guid(readOnly[grant.container].id, grant.principalId, roleIds.storageBlobDataReader)
    scope: readOnly[grant.container]
    properties: {
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataReader)
      principalId: grant.principalId
      principalType: 'ServicePrincipal'
      description: 'Data task kinds read.'
    }
  }
]

var sharedSettings = {
  COORDINATION_STORAGE__blobServiceUri: account.properties.primaryEndpoints.blob
  COORDINATION_STORAGE__queueServiceUri: account.properties.primaryEndpoints.queue
  COORDINATION_STORAGE__credential: 'managedidentity'
  LEASE_CONTAINER: lease.name
  STATE_CONTAINER: state.name
  INPUT_CONTAINER: inputs.name
  SYSTEM_CONTAINER: system.name
  WORK_QUEUE: workQueue
  RESULTS_QUEUE: resultsQueue
  WAKE_QUEUE: wakeQueue
}

@description('The coordinator\'s app settings for each app of apps, in the same order: merge them into the app\'s settings. They hold names and endpoints only, no secret.')
output appSettings coordinatorAppSettings[] = [
  for app in apps: union(sharedSettings, contains(app, 'clientId') ? { COORDINATION_STORAGE__clientId: app.?clientId } : {})
]

@description('The containers created: lease, state, input, system, then outputContainers and readOnlyContainers.')
output containerNames string[] = concat([lease.name, state.name, inputs.name, system.name], outputContainers, readOnlyContainers)

@description('The queues created, poison queues included.')
output queueNames string[] = queueNames
