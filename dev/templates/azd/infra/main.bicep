// Entry point of `azd up` (azure.yaml): subscription scope, as the Flex Consumption azd templates are. Creates the azd
// environment's resource group and deploys app.bicep into it, the app tagged with azure.yaml's service name, which is
// how `azd deploy` finds it.
targetScope = 'subscription'

@description('Name of the azd environment (AZURE_ENV_NAME): the resource group is rg-<name>, the app func-<name>.')
@minLength(1)
@maxLength(40)
param environmentName string

@description('Region of every resource (AZURE_LOCATION); it must offer Flex Consumption.')
@minLength(1)
@metadata({
  azd: {
    type: 'location'
  }
})
param location string

resource environmentGroup 'Microsoft.Resources/resourceGroups@2025-04-01' = {
  name: 'rg-${environmentName}'
  location: location
  tags: {
    'azd-env-name': environmentName
  }
}

module app 'app.bicep' = {
  name: 'app'
  scope: environmentGroup
  params: {
    appName: 'func-${environmentName}'
    location: location
    tags: {
      'azd-env-name': environmentName
      'azd-service-name': 'app'
    }
  }
}

output AZURE_LOCATION string = location
output AZURE_RESOURCE_GROUP string = environmentGroup.name
output AZURE_FUNCTION_APP_NAME string = app.outputs.appName
