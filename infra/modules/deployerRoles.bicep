// Data-plane roles for the person (or pipeline) who deploys and operates the coordinator, so that uploading job inputs
// and `npm run enqueue` work against the deployed account from a laptop (`az login`; DefaultAzureCredential). The
// accounts refuse shared keys, so without these every such call answers 403. Deployed only when main.bicep's
// deployerPrincipalId is set (azd sets it to the signed-in user).
//
// What `npm run enqueue` does, and the narrowest built-in role for it:
// - upload inputs and manifests to INPUT_CONTAINER: Storage Blob Data Contributor there;
// - store the job's spec, item chunks and inbox marker, or a cancellation marker, in SYSTEM_CONTAINER: Storage Blob
//   Data Contributor there;
// - read a job's state for --wait (STATE_CONTAINER): Storage Blob Data Reader there (it never writes the state);
// - send the wake-up on WAKE_QUEUE: Storage Queue Data Message Sender on that queue only.
// Role ids are the built-in ones (test/infra/roles.test.ts checks them against the documented list).
var roleIds = {
  storageBlobDataContributor: 'ba92f5b4-2d11-453d-a403-e96b0029c9fe' // Storage Blob Data Contributor
  storageBlobDataReader: '2a2b9908-6ea1-4ae2-8e65-a410df84e7d1' // Storage Blob Data Reader
  storageQueueDataMessageSender: 'c6a89b2d-59bc-44d0-9896-0f6e12d7b80a' // Storage Queue Data Message Sender
}

@description('Object id of the deployer: a user, a group or a service principal (a pipeline).')
param principalId string

@description('What kind of principal principalId is.')
@allowed([
  'User'
  'Group'
  'ServicePrincipal'
])
param principalType string = 'User'

@description('Name of the coordination storage account (same resource group).')
param coordinationStorageName string

@description('INPUT_CONTAINER: job inputs the deployer uploads.')
param inputContainerName string

@description('SYSTEM_CONTAINER: where a submission stores the job.')
param systemContainerName string

@description('STATE_CONTAINER: the jobs\' state, read by enqueue --wait.')
param stateContainerName string

@description('WAKE_QUEUE: the wake-up a submission sends.')
param wakeQueueName string

resource coordinationStorage 'Microsoft.Storage/storageAccounts@2026-06-01' existing = {
  name: coordinationStorageName
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2026-06-01' existing = {
  parent: coordinationStorage
  name: 'default'
}

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2026-06-01' existing = {
  parent: coordinationStorage
  name: 'default'
}

resource inputContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2026-06-01' existing = {
  parent: blobService
  name: inputContainerName
}

resource systemContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2026-06-01' existing = {
  parent: blobService
  name: systemContainerName
}

resource stateContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2026-06-01' existing = {
  parent: blobService
  name: stateContainerName
}

resource wakeQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2026-06-01' existing = {
  parent: queueService
  name: wakeQueueName
}

resource inputWriter 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(inputContainer.id, principalId, roleIds.storageBlobDataContributor)
  scope: inputContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataContributor)
    principalId: principalId
    principalType: principalType
    description: 'Deployer: upload job inputs and manifests.'
  }
}

resource systemWriter 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(systemContainer.id, principalId, roleIds.storageBlobDataContributor)
  scope: systemContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataContributor)
    principalId: principalId
    principalType: principalType
    description: 'Deployer: submit and cancel jobs (npm run enqueue).'
  }
}

resource stateReader 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(stateContainer.id, principalId, roleIds.storageBlobDataReader)
  scope: stateContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageBlobDataReader)
    principalId: principalId
    principalType: principalType
    description: 'Deployer: read job progress (npm run enqueue -- --wait).'
  }
}

resource wakeSender 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(wakeQueue.id, principalId, roleIds.storageQueueDataMessageSender)
  scope: wakeQueue
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleIds.storageQueueDataMessageSender)
    principalId: principalId
    principalType: principalType
    description: 'Deployer: wake the coordinator when submitting or cancelling.'
  }
}
