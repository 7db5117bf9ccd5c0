// Least-privilege role assignments for ONE app's user-assigned managed identity.
//
// Role definition ids are the built-in ones, the same in every Azure cloud; they are listed in
// https://learn.microsoft.com/azure/role-based-access-control/built-in-roles/storage and
// https://learn.microsoft.com/azure/role-based-access-control/built-in-roles/monitor .
// test/infra/roles.test.ts checks every id below against that list and that each line names its role.
//
// What is deliberately NOT granted:
// - Any blob role on the coordination account as a whole: blob access is granted per container, so the identity can
//   change only the containers it writes (lease, state, system) and can only read the job inputs.
// - Storage Blob Data Owner anywhere on the coordination account: Owner only adds POSIX ACL management (hierarchical
//   namespace), which a flat blob account does not use. Lease acquire/renew/release/break and conditional writes
//   are blob write operations (Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write), which
//   Contributor grants.
// - Storage Account Contributor / Storage Queue Data Contributor on host storage: the Functions docs require them for
//   AzureWebJobsStorage only when the app has blob triggers; this app has timer, queue and HTTP triggers only.
//   (Table Data Contributor IS granted there: diagnostic events; see hostTableContributor.)
// - Any control-plane role (Contributor, Owner, key operator): the app never manages resources or reads keys.
var roleIds = {
  storageBlobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b' // Storage Blob Data Owner
  storageBlobDataContributor: 'ba92f5b4-2d11-453d-a403-e96b0029c9fe' // Storage Blob Data Contributor
  storageBlobDataReader: '2a2b9908-6ea1-4ae2-8e65-a410df84e7d1' // Storage Blob Data Reader
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88' // Storage Queue Data Contributor
  storageTableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3' // Storage Table Data Contributor
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb' // Monitoring Metrics Publisher
}

@description('Principal (object) id of the app\'s user-assigned managed identity.')
param principalId string

@description('Name of the shared coordination storage account (same resource group).')
param coordinationStorageName string

@description('LEASE_CONTAINER in the coordination account: the leader lease blob (read/write).')
param leaseContainerName string

@description('STATE_CONTAINER in the coordination account: the coordinator\'s fenced state (read/write).')
param stateContainerName string

@description('INPUT_CONTAINER in the coordination account: job inputs, the user\'s data (read only).')
param inputContainerName string

@description('SYSTEM_CONTAINER in the coordination account: everything else the app writes (read/write).')
param systemContainerName string

@description('Name of this app\'s own host storage account (same resource group).')
param hostStorageName string

@description('Name of the Application Insights component (same resource group).')
param applicationInsightsName string

resource coordinationStorage 'Microsoft.Storage/storageAccounts@2024-01-01' existing = {
  name: coordinationStorageName
}

resource hostStorage 'Microsoft.Storage/storageAccounts@2024-01-01' existing = {
  name: hostStorageName
}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

resource coordinationBlobService 'Microsoft.Storage/storageAccounts/blobServices@2024-01-01' existing = {
  parent: coordinationStorage
  name: 'default'
}

resource leaseContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2024-01-01' existing = {
  parent: coordinationBlobService
  name: leaseContainerName
}

resource stateContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2024-01-01' existing = {
  parent: coordinationBlobService
  name: stateContainerName
}

resource inputContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2024-01-01' existing = {
  parent: coordinationBlobService
  name: inputContainerName
}

resource systemContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2024-01-01' existing = {
  parent: coordinationBlobService
  name: systemContainerName
}

// Storage Blob Data Reader on the input container only: job inputs are the user's data. The app reads and lists them;
// it cannot overwrite or delete one, whatever a bug or a bad submission asks for.
resource inputReader 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(inputContainer.id, principalId, roleIds.storageBlobDataReader)
  scope: inputContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataReader)
    principalId: principalId
    principalType: 'ServicePrincipal'
    description: 'Job inputs: read and list only.'
  }
}

// Storage Blob Data Contributor on the lease container: the leader election takes, renews, releases and breaks the
// lease on <LEASE_BLOB> and creates that blob if missing (blob write). Reader cannot take a lease.
resource leaseContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(leaseContainer.id, principalId, roleIds.storageBlobDataContributor)
  scope: leaseContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataContributor)
    principalId: principalId
    principalType: 'ServicePrincipal'
    description: 'Leader lease: acquire, renew, release, break; create the lease blob.'
  }
}

// Storage Blob Data Contributor on the state container: the coordinator's fenced state (ETag-conditional writes).
resource stateContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(stateContainer.id, principalId, roleIds.storageBlobDataContributor)
  scope: stateContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataContributor)
    principalId: principalId
    principalType: 'ServicePrincipal'
    description: 'Coordinator state: fenced, ETag-conditional writes.'
  }
}

// Storage Blob Data Contributor on the system container: what the app writes besides its state.
resource systemContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(systemContainer.id, principalId, roleIds.storageBlobDataContributor)
  scope: systemContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataContributor)
    principalId: principalId
    principalType: 'ServicePrincipal'
    description: 'App-written blobs other than the state (SYSTEM_CONTAINER).'
  }
}

// Storage Queue Data Contributor on the coordination account: the app both sends (leader -> work-items,
// workers -> work-results, submissions -> coordinator-wake) and receives/deletes (queue triggers on work-items and
// coordinator-wake; leader drains work-results), and the
// Functions host moves a message that failed maxDequeueCount times to <queue>-poison after a create-if-not-exists
// of that queue (a Create Queue call, queues/write). Storage Queue Data Message Sender + Message Processor + Reader
// together cover the messages but not queues/write; Contributor is the narrowest built-in role that covers all of it.
// The Functions docs list it for queue output bindings.
resource coordinationQueueContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(coordinationStorage.id, principalId, roleIds.storageQueueDataContributor)
  scope: coordinationStorage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageQueueDataContributor)
    principalId: principalId
    principalType: 'ServicePrincipal'
    description: 'Work, result and wake-up queues: send, receive, delete, and poison-queue moves by the Functions host.'
  }
}

// Storage Blob Data Owner on this app's OWN host storage only: what the Functions docs require for an
// identity-based AzureWebJobsStorage (host locks and timer schedule status in azure-webjobs-hosts, function keys in
// azure-webjobs-secrets) and what Flex Consumption needs to read the deployment package container. Granted per app,
// so no app can touch another app's host storage.
resource hostBlobOwner 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(hostStorage.id, principalId, roleIds.storageBlobDataOwner)
  scope: hostStorage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataOwner)
    principalId: principalId
    principalType: 'ServicePrincipal'
    description: 'Functions host storage (AzureWebJobsStorage) and the Flex Consumption deployment package.'
  }
}

// Storage Table Data Contributor on this app's OWN host storage only: the Functions docs name Blob Data Owner as the
// host's minimum but note that it does not cover diagnostic events, which the host writes to table storage
// (AzureWebJobsStorage__tableServiceUri); the official Flex Consumption samples grant this role for the same reason.
resource hostTableContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(hostStorage.id, principalId, roleIds.storageTableDataContributor)
  scope: hostStorage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageTableDataContributor)
    principalId: principalId
    principalType: 'ServicePrincipal'
    description: 'Functions host diagnostic events (table storage in AzureWebJobsStorage).'
  }
}

// Monitoring Metrics Publisher on the Application Insights component: with local auth disabled, this is the role
// that lets the identity send telemetry (Microsoft.Insights/Telemetry/Write). It grants no read access to the data.
resource telemetryPublisher 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(applicationInsights.id, principalId, roleIds.monitoringMetricsPublisher)
  scope: applicationInsights
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.monitoringMetricsPublisher)
    principalId: principalId
    principalType: 'ServicePrincipal'
    description: 'Entra ID-authenticated telemetry ingestion (Application Insights local auth is off).'
  }
}
