// Entry point of `azd up` (azure.yaml): subscription scope, as the official Flex Consumption quickstarts. Creates the
// azd environment's resource group and deploys main.bicep into it with ONE app in the environment's region, tagged
// for azd deploy; the signed-in user gets the data-plane roles to upload inputs and run npm run enqueue. For several
// apps sharing one coordinator, deploy main.bicep with az (docs/contributing/deploy-this-repository.md).

targetScope = 'subscription'

@description('Name of the azd environment (AZURE_ENV_NAME): the resource group is rg-<name>, and names derive from it.')
@minLength(1)
@maxLength(64)
param environmentName string

@description('Region of every resource (AZURE_LOCATION); it must offer Flex Consumption: az functionapp list-flexconsumption-locations.')
@minLength(1)
@metadata({
  azd: {
    type: 'location'
  }
})
param location string

@description('Object id of the signed-in user (AZURE_PRINCIPAL_ID, set by azd): given the data-plane roles to upload inputs and run npm run enqueue. Empty: none.')
param principalId string = ''

@description('What kind of principal principalId is: User when you run azd, ServicePrincipal in a pipeline.')
@allowed([
  'User'
  'Group'
  'ServicePrincipal'
])
param principalType string = 'User'

@description('E-mail address the alerts go to (ALERT_EMAIL); empty: the alert rules notify nobody.')
param alertEmail string = ''

var tags = {
  'azd-env-name': environmentName
}

resource environmentGroup 'Microsoft.Resources/resourceGroups@2025-04-01' = {
  name: 'rg-${environmentName}'
  location: location
  tags: tags
}

module coordinator 'main.bicep' = {
  name: 'coordinator'
  scope: environmentGroup
  params: {
    appRegions: [
      location
    ]
    coordinationLocation: location
    tags: tags
    deployerPrincipalId: principalId
    deployerPrincipalType: principalType
    alertEmail: alertEmail
    // The service of azure.yaml: azd deploy finds the app by this tag.
    azdServiceName: 'coordinator'
  }
}

// Outputs become azd environment values (azd env get-values): the app, and the coordination account's endpoints
// that npm run enqueue reads (with az login, through DefaultAzureCredential).
output AZURE_LOCATION string = location
output AZURE_TENANT_ID string = tenant().tenantId
output AZURE_RESOURCE_GROUP string = environmentGroup.name
output AZURE_FUNCTION_APP_NAME string = coordinator.outputs.appNames[0]
output COORDINATION_STORAGE__blobServiceUri string = coordinator.outputs.coordinationBlobEndpoint
output COORDINATION_STORAGE__queueServiceUri string = coordinator.outputs.coordinationQueueEndpoint
