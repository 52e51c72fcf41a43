package local.docket.registry;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import java.util.List;
import javax.enterprise.inject.Produces;
import javax.inject.Singleton;

/**
 * Stands in for the bean that the apicurio-common-app-components-config-index
 * extension generates at build time (the list of properties an admin may change
 * at run time): that extension's deployment artifact is not published, so the
 * extension is left out and this registry has no run-time-changeable properties.
 * Every property still reads from the ordinary configuration.
 */
public class NoDynamicConfig {
    @Produces
    @Singleton
    DynamicConfigPropertyList dynamicConfigPropertyList() {
        return new DynamicConfigPropertyList(List.of());
    }
}
